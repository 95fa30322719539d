// APNsClient
