print("pgpush")
