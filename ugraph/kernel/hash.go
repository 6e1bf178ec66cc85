package kernel

import (
	"github.com/mirage-go/mirage/internal/structhash"
	"github.com/mirage-go/mirage/ugraph/block"
)

// Hash returns a hash of g's structure: its ops in order with their kinds,
// attributes, operands and block graphs, the tensors' shapes and dtypes, and
// the outputs. Graphs built by the same sequence of builder calls hash alike;
// tensor ids are positional, so two graphs that differ only in how a caller
// named its tensors hash alike too.
//
// The result cache is keyed by it, GPU profiles name the candidates they
// measured with it, and it breaks the ranking's ties. Its value is
// hashstructure.Hash(g, hashstructure.FormatV2, nil), computed field by
// field (internal/structhash): the reflective walk cost more than the
// search that found the graph.
func Hash(g *Graph) uint64 { return HashWith(g, block.Hash) }

// HashWith is Hash, with the hashes of g's block graphs from blockHash,
// which must return block.Hash's: a search that attaches one block graph
// to many candidates hashes it once (rehashing it was a fifth of a
// decode-attention search's time).
func HashWith(g *Graph, blockHash func(*block.Graph) uint64) uint64 {
	s := structhash.NewStruct(hashNames.Graph)
	s.Field(hashNames.Tensors, structhash.Slice(len(g.Tensors), func(i int) uint64 { return hashTensor(g.Tensors[i]) }))
	s.Field(hashNames.Ops, structhash.Slice(len(g.Ops), func(i int) uint64 { return hashOp(&g.Ops[i], blockHash) }))
	s.Field(hashNames.Outputs, hashIDs(g.Outputs))
	return s.Sum()
}

func hashTensor(t Tensor) uint64 {
	s := structhash.NewStruct(hashNames.Tensor)
	s.Field(hashNames.Shape, t.Shape.StructHash())
	s.Field(hashNames.DType, structhash.Uint8(uint8(t.DType)))
	return s.Sum()
}

func hashOp(op *Op, blockHash func(*block.Graph) uint64) uint64 {
	s := structhash.NewStruct(hashNames.Op)
	s.Field(hashNames.Kind, structhash.Uint8(uint8(op.Kind)))
	s.Field(hashNames.In, hashIDs(op.In))
	s.Field(hashNames.Out, hashIDs(op.Out))
	s.Field(hashNames.Attr, op.Attr.StructHash())
	b := structhash.Nil
	if op.Block != nil {
		b = blockHash(op.Block)
	}
	s.Field(hashNames.Block, b)
	return s.Sum()
}

func hashIDs(ids []TensorID) uint64 {
	return structhash.Slice(len(ids), func(i int) uint64 { return structhash.Int32(int32(ids[i])) })
}

// hashNames are the hashes of the type and field names Hash walks.
var hashNames = struct {
	Graph, Tensors, Ops, Outputs   uint64
	Tensor, Shape, DType           uint64
	Op, Kind, In, Out, Attr, Block uint64
}{
	structhash.String("Graph"), structhash.String("Tensors"), structhash.String("Ops"), structhash.String("Outputs"),
	structhash.String("Tensor"), structhash.String("Shape"), structhash.String("DType"),
	structhash.String("Op"), structhash.String("Kind"), structhash.String("In"), structhash.String("Out"), structhash.String("Attr"), structhash.String("Block"),
}
