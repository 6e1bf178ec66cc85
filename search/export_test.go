package search

// CacheVersion is cacheVersion, for the tests of package search_test.
const CacheVersion = cacheVersion
