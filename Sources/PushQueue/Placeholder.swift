// PushQueue
