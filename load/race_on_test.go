//go:build race

package load

// raceEnabled: the race detector slows the exhaustive tests down tenfold;
// they test a sample under it.
const raceEnabled = true
