// Package examples embeds the example programs and their hand-written
// μGraphs, so that tools and tests can use them from any directory.
package examples

import "embed"

// FS holds every .py file of this directory.
//
//go:embed *.py
var FS embed.FS

// Engine is engine/engine.cpp: a decode loop over a dynamic program's one
// entry point, as an inference engine runs it (see the file).
//
//go:embed engine/engine.cpp
var Engine []byte
