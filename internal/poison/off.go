//go:build !denorm_poison

package poison

// On is false: reused memory is left as it is.
const On = false
