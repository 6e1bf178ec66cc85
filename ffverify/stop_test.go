package ffverify_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/mirage-go/mirage/ffverify"
)

// A verifier made by StopWhen gives up with ErrStopped once its channel is
// closed, and the verifier it was made from is not stopped.
func TestStopWhen(t *testing.T) {
	v, err := ffverify.New(rmsnormMatmul(16, 64, 96), ffverify.Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	cand := rmsnormMatmulFused(16, 64, 96, 3, 4)
	stop := make(chan struct{})
	w := v.StopWhen(stop)
	if r, err := w.Verify(cand); err != nil || !r.Equivalent {
		t.Fatalf("before the stop: %+v, %v", r, err)
	}
	close(stop)
	if _, err := w.Verify(cand); !errors.Is(err, ffverify.ErrStopped) {
		t.Errorf("Verify after the stop: %v, want ErrStopped", err)
	}
	if _, err := w.Reject(rmsForMean(cand)); !errors.Is(err, ffverify.ErrStopped) {
		t.Errorf("Reject after the stop: %v, want ErrStopped", err)
	}
	if r, err := v.Verify(cand); err != nil || !r.Equivalent {
		t.Errorf("the verifier it was made from: %+v, %v", r, err)
	}
}

// Checks stopped midway, at any point, leave the memo they share with
// checks that are not stopped usable: those finish, with the right
// verdicts, and none waits forever for a product a stopped check was
// computing.
func TestStopMidwayKeepsTheMemo(t *testing.T) {
	v, err := ffverify.New(rmsnormMatmul(64, 256, 256), ffverify.Options{Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	good, bad := rmsnormMatmulFused(64, 256, 256, 4, 4), rmsForMean(rmsnormMatmulFused(64, 256, 256, 4, 4))
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 32 {
		stop := make(chan struct{})
		w := v.StopWhen(stop)
		wg.Add(2)
		go func() { // stopped after a while: somewhere in its check
			defer wg.Done()
			time.Sleep(time.Duration(i) * 200 * time.Microsecond)
			close(stop)
		}()
		go func() {
			defer wg.Done()
			cand, want := good, true
			if i%2 == 1 {
				cand, want = bad, false
			}
			r, err := w.Verify(cand)
			if err != nil && !errors.Is(err, ffverify.ErrStopped) {
				errs <- err
			}
			if err == nil && r.Equivalent != want {
				errs <- errors.New("a stopped-or-not check gave the wrong verdict")
			}
			if r, err := v.Verify(cand); err != nil || r.Equivalent != want {
				errs <- errors.New("an unstopped check after a stopped one gave the wrong verdict")
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		t.Fatal("checks still running after 5 minutes: one waits for a product a stopped check left")
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A kernel stopped midway while it computes a memo entry leaves no entry
// behind that the next check would wait for: the next check computes it
// and gives the right verdict.
func TestStoppedKernelLeavesNoEntry(t *testing.T) {
	for _, n := range []int{1, 2, 4} {
		v, err := ffverify.New(rmsnormMatmul(64, 256, 256), ffverify.Options{Seed: 5})
		if err != nil {
			t.Fatal(err)
		}
		cand := rmsnormMatmulFused(64, 256, 256, 4, 4)
		stopped, err := ffverify.KernelStoppedAt(v, cand, n)
		if err != nil || !stopped {
			t.Fatalf("stopped at check %d: %v, %v", n, stopped, err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			if r, err := v.Verify(cand); err != nil || !r.Equivalent {
				t.Errorf("after a kernel stopped at check %d: %+v, %v", n, r, err)
			}
		}()
		select {
		case <-done:
		case <-time.After(2 * time.Minute):
			t.Fatalf("after a kernel stopped at check %d: the check waits for the entry it left", n)
		}
	}
}

// NewStopping gives up fingerprinting the program once its channel is
// closed, and the verifier it makes stops with it.
func TestNewStopping(t *testing.T) {
	stop := make(chan struct{})
	close(stop)
	if _, err := ffverify.NewStopping(rmsnormMatmul(16, 64, 96), ffverify.Options{Seed: 3}, stop); !errors.Is(err, ffverify.ErrStopped) {
		t.Errorf("a closed channel: %v, want ErrStopped", err)
	}
	open := make(chan struct{})
	v, err := ffverify.NewStopping(rmsnormMatmul(16, 64, 96), ffverify.Options{Seed: 3}, open)
	if err != nil {
		t.Fatal(err)
	}
	cand := rmsnormMatmulFused(16, 64, 96, 3, 4)
	if r, err := v.Verify(cand); err != nil || !r.Equivalent {
		t.Fatalf("before the stop: %+v, %v", r, err)
	}
	close(open)
	if _, err := v.Verify(cand); !errors.Is(err, ffverify.ErrStopped) {
		t.Errorf("after the stop: %v, want ErrStopped", err)
	}
	if r, err := v.StopWhen(nil).Verify(cand); err != nil || !r.Equivalent {
		t.Errorf("a copy that never stops: %+v, %v", r, err)
	}
}
