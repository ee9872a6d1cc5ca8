// Package static holds the console's vendored and hand-written assets,
// embedded in the binary.
package static

import "embed"

// FS holds the assets served under /static/ (and the icon, also at
// /favicon.ico where browsers look for it).
//
//go:embed *.css *.js favicon.ico
var FS embed.FS

// Manual holds the operator manual's markdown pages (manual/*.md), which
// the console renders under /manual/.
//
//go:embed manual/*.md
var Manual embed.FS
