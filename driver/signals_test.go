package driver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mirage-go/mirage/internal/tempdir"
)

// A second interrupt exits at once, with ExitInterrupted, and takes the
// temporary directories the process made (a tune run's build) with it:
// the deferred cleanups that would have removed them do not run.
func TestSecondInterruptRemovesTempDirs(t *testing.T) {
	if os.Getenv("MIRAGE_TEST_SECOND_INTERRUPT") == "1" {
		ctx, stop := InterruptibleSaying(context.Background(), os.Stderr, "stopping")
		defer stop()
		dir, remove, err := tempdir.Make("mirage-test-")
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		defer remove()
		fmt.Println(dir)
		p, _ := os.FindProcess(os.Getpid())
		p.Signal(os.Interrupt)
		<-ctx.Done()
		p.Signal(os.Interrupt)
		time.Sleep(time.Minute)
		os.Exit(0) // not reached: the second signal exits
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSecondInterruptRemovesTempDirs$")
	cmd.Env = append(os.Environ(), "MIRAGE_TEST_SECOND_INTERRUPT=1", "TMPDIR="+t.TempDir())
	out, err := cmd.Output()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != ExitInterrupted {
		t.Fatalf("the process ended with %v, want exit status %d\n%s", err, ExitInterrupted, out)
	}
	dir, _, _ := strings.Cut(string(out), "\n")
	if !strings.Contains(dir, "mirage-test-") {
		t.Fatalf("the process printed %q, not its directory", out)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("%s is left after the second interrupt", dir)
	}
}
