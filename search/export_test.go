package search

// CacheVersion is cacheVersion, for the tests of package search_test.
const CacheVersion = cacheVersion

// CacheHolding is a cache in dir whose entries hold at most n bytes.
func CacheHolding(dir string, n int) Cache { return Cache{Dir: dir, maxBytes: n} }
