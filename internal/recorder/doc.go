// Package recorder keeps, for tests, what callbacks report from other
// goroutines (changes, errors, warnings), so that a test can read it while
// they go on.
//
// Tests only. It imports nothing of this module.
package recorder
