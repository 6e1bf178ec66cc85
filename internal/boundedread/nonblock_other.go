//go:build !unix

package boundedread

// nonBlock: elsewhere an open does not wait on a pipe; the mode check
// after it refuses what is not a regular file.
const nonBlock = 0
