package platform

// CloseInheritedOnExec is a no-op on Windows: handles are inherited only when asked for.
func CloseInheritedOnExec() error { return nil }
