package cuda

// The helpers that stitched_test.go (package cuda_test: it runs the
// driver, which imports this package) shares with this package's tests.
var (
	EmuRun      = emuRun
	NeedNVCC    = needNVCC
	NVCCCompile = nvccCompile
	LoadSource  = loadSource
)
