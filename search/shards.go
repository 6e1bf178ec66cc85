package search

import (
	"hash/maphash"
	"sync"
)

// shardedMap is a map that every worker reads and writes: in shards, each
// with its lock, so that workers rarely wait for each other. (A sync.Map
// would box each key, which costs an allocation per lookup.)
type shardedMap[K comparable, V any] struct {
	seed   maphash.Seed
	shards [64]shard[K, V]
}

type shard[K comparable, V any] struct {
	sync.Mutex
	m map[K]V
}

func newShardedMap[K comparable, V any]() *shardedMap[K, V] {
	return &shardedMap[K, V]{seed: maphash.MakeSeed()}
}

func (r *shardedMap[K, V]) shard(key K) *shard[K, V] {
	return &r.shards[maphash.Comparable(r.seed, key)%uint64(len(r.shards))]
}

func (r *shardedMap[K, V]) load(key K) (V, bool) {
	sh := r.shard(key)
	sh.Lock()
	v, ok := sh.m[key]
	sh.Unlock()
	return v, ok
}

func (r *shardedMap[K, V]) store(key K, v V) {
	sh := r.shard(key)
	sh.Lock()
	if sh.m == nil {
		sh.m = map[K]V{}
	}
	sh.m[key] = v
	sh.Unlock()
}
