// Package check decides whether an answer is right: mirage verify and
// eval, below the command line.
//
// Graphs compares two kernel graphs on the same random inputs, exactly
// over finite fields (ffverify) or in float64 within a tolerance (interp);
// what the fields find equal is evaluated once in float64 too where a
// bound on the graphs' integers and degrees cannot rule out that they pass
// what the fields keep (magnitudes);
// Dynamic does it for every graph of a dynamic program's document at its
// own number of rows m: the program is evaluated once at the largest m and
// kept in an ffverify.Pool (the kind the dynamic search keeps its parts'
// fingerprints in), and at each smaller m evaluated again on the first rows
// of those inputs (Pool.Rows), so that no verdict rests on the rows being
// independent; Engine emits such a document's one entry point and runs
// examples/engine's decode loop over it in the CPU emulator (enginerun);
// Eval summarizes a graph's float64 outputs.
//
// Graphs, Dynamic and Eval keep to a memory bound (Options.MaxBytes, or
// memlimit.Default) that they check before allocating. Each writes its
// verdict in the words mirage prints; "not equivalent" is a result, not an
// error.
package check
