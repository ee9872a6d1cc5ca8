//go:build !race

package routing

// raceBuild: the race detector's instrumentation enlarges every frame.
const raceBuild = false
