// Package manifests owns how the project's kustomizations are found and
// built, the way `kubectl apply -k` builds them, for the tests that check
// the manifests and the ones that apply them to a real API server.
//
// Tests only (deploy/kustomize, deploy/monitoring, test/e2e). It imports
// nothing of this module.
package manifests
