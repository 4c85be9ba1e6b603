//go:build denorm_poison

package poison

// On is true: reused memory is poisoned.
const On = true
