// PGPushCore
