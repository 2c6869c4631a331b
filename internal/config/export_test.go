package config

// SetServiceAccountNamespaceFile points the in-cluster namespace lookup at
// path until the returned function is called.
func SetServiceAccountNamespaceFile(path string) (restore func()) {
	old := serviceAccountNamespaceFile
	serviceAccountNamespaceFile = path
	return func() { serviceAccountNamespaceFile = old }
}
