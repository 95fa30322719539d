public enum APNsCredentialsStub {}
