// Package static holds the console's vendored and hand-written assets,
// embedded in the binary.
package static

import "embed"

// FS holds the assets served under /static/.
//
//go:embed *.css *.js
var FS embed.FS
