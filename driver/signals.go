package driver

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/mirage-go/mirage/internal/atomicfile"
	"github.com/mirage-go/mirage/internal/tempdir"
)

// ExitInterrupted is the exit status after a second interrupt.
const ExitInterrupted = 130

// Interruptible returns a context that a first SIGINT or SIGTERM cancels:
// a Run given it stops searching and answers with what it verified, within
// about a second (interruptGrace). A second signal exits the process at
// once with ExitInterrupted, writing nothing more. stop ends the watch.
func Interruptible(parent context.Context, notice io.Writer) (ctx context.Context, stop func()) {
	return InterruptibleSaying(parent, notice, "finishing with what was found")
}

// InterruptibleSaying is Interruptible for work that has nothing to
// finish with: what says what it does on the first signal ("stopping and
// removing its build directory").
func InterruptibleSaying(parent context.Context, notice io.Writer, what string) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
		case <-done:
			return
		}
		fmt.Fprintf(notice, "\ninterrupted: %s (interrupt again to exit at once)\n", what)
		cancel()
		select {
		case <-sigs:
			atomicfile.RemovePending() // a file half written (a shard's, a cache entry)
			RemoveMadeDirs()           // an output directory left empty
			tempdir.RemoveAll()        // and the temporary directories a build was using
			os.Exit(ExitInterrupted)
		case <-done:
		}
	}()
	return ctx, func() { signal.Stop(sigs); close(done); cancel() }
}
