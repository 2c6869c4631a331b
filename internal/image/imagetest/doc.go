// Package imagetest gives tests of pushing the image a registry that wants
// a password and the credentials where docker login leaves them, so that
// internal/image's push test and the e2e test of make image-push set both
// up the same way.
//
// Tests only. It imports nothing of this module.
package imagetest
