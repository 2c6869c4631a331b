//go:build race

package e2e

// raceEnabled is set when the tests run with -race: the bridge is then
// built with -race as well.
const raceEnabled = true
