// Package check decides whether an answer is right: mirage verify and
// eval, below the command line.
//
// Graphs compares two kernel graphs on the same random inputs, exactly
// over finite fields (ffverify) or in float64 within a tolerance (interp);
// Dynamic does it for every graph of a dynamic program's document at its
// own number of rows, the program's fingerprints kept once at the largest
// m and cut to each smaller one (ffverify.Pool, the pool the dynamic
// search uses too); Engine emits such a document's one entry point and
// runs examples/engine's decode loop over it in the CPU emulator
// (enginerun); Eval summarizes a graph's float64 outputs.
//
// Every check is bounded by a memory limit (Options.MaxBytes) that it
// enforces before allocating, and writes its verdict in the words mirage
// prints; a verdict of "not equivalent" is a result, not an error.
package check
