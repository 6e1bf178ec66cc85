package block

import "github.com/mirage-go/mirage/internal/structhash"

// Hash returns a hash of g's structure (launch parameters, ops, tiles), as
// kernel.Hash does for kernel graphs: hashstructure.Hash(g,
// hashstructure.FormatV2, nil), computed field by field
// (internal/structhash).
func Hash(g *Graph) uint64 {
	s := structhash.NewStruct(hashNames.Graph)
	s.Field(hashNames.Grid, hashInts(g.Grid))
	s.Field(hashNames.Threads, hashInts(g.Threads))
	s.Field(hashNames.ForloopRange, structhash.Int(g.ForloopRange))
	s.Field(hashNames.ReductionDimx, structhash.Int(g.ReductionDimx))
	if g.Stages != 0 {
		// Only when set, so that graphs that leave the depth to the plan
		// keep the hashes recorded before the field existed.
		s.Field(hashNames.Stages, structhash.Int(g.Stages))
	}
	s.Field(hashNames.Tensors, structhash.Slice(len(g.Tensors), func(i int) uint64 { return hashTensor(g.Tensors[i]) }))
	s.Field(hashNames.Ops, structhash.Slice(len(g.Ops), func(i int) uint64 { return hashOp(&g.Ops[i]) }))
	return s.Sum()
}

// HashInclude is hashstructure's Includable: it leaves out a Stages of 0,
// as Hash does, so that hashstructure's hash of a graph stays Hash's.
func (g Graph) HashInclude(field string, _ any) (bool, error) {
	return field != "Stages" || g.Stages != 0, nil
}

// hashInts hashes a Dim3 or a Map.
func hashInts(a [3]int) uint64 {
	return structhash.Ordered(structhash.Ordered(structhash.Ordered(0, structhash.Int(a[0])), structhash.Int(a[1])), structhash.Int(a[2]))
}

func hashTensor(t Tensor) uint64 {
	s := structhash.NewStruct(hashNames.Tensor)
	s.Field(hashNames.Shape, t.Shape.StructHash())
	s.Field(hashNames.DType, structhash.Uint8(uint8(t.DType)))
	s.Field(hashNames.PostLoop, structhash.Bool(t.PostLoop))
	return s.Sum()
}

func hashOp(op *Op) uint64 {
	s := structhash.NewStruct(hashNames.Op)
	s.Field(hashNames.Kind, structhash.Uint8(uint8(op.Kind)))
	s.Field(hashNames.In, structhash.Ordered(structhash.Ordered(0, structhash.Int32(int32(op.In[0]))), structhash.Int32(int32(op.In[1]))))
	s.Field(hashNames.Out, structhash.Int32(int32(op.Out)))
	s.Field(hashNames.Attr, op.Attr.StructHash())

	in := structhash.NewStruct(hashNames.InputOp)
	in.Field(hashNames.DShape, op.Input.DShape.StructHash())
	in.Field(hashNames.IMap, hashInts(op.Input.IMap))
	in.Field(hashNames.FMap, structhash.Int(op.Input.FMap))
	s.Field(hashNames.Input, in.Sum())

	out := structhash.NewStruct(hashNames.OutputOp)
	out.Field(hashNames.DShape, op.Output.DShape.StructHash())
	out.Field(hashNames.OMap, hashInts(op.Output.OMap))
	s.Field(hashNames.Output, out.Sum())
	return s.Sum()
}

// hashNames are the hashes of the type and field names Hash walks.
var hashNames = struct {
	Graph, Grid, Threads, ForloopRange, ReductionDimx, Tensors, Ops uint64
	Stages                                                          uint64
	Tensor, Shape, DType, PostLoop                                  uint64
	Op, Kind, In, Out, Attr, Input, Output                          uint64
	InputOp, DShape, IMap, FMap, OutputOp, OMap                     uint64
}{
	structhash.String("Graph"), structhash.String("Grid"), structhash.String("Threads"), structhash.String("ForloopRange"),
	structhash.String("ReductionDimx"), structhash.String("Tensors"), structhash.String("Ops"),
	structhash.String("Stages"),
	structhash.String("Tensor"), structhash.String("Shape"), structhash.String("DType"), structhash.String("PostLoop"),
	structhash.String("Op"), structhash.String("Kind"), structhash.String("In"), structhash.String("Out"),
	structhash.String("Attr"), structhash.String("Input"), structhash.String("Output"),
	structhash.String("InputOp"), structhash.String("DShape"), structhash.String("IMap"), structhash.String("FMap"),
	structhash.String("OutputOp"), structhash.String("OMap"),
}
