package ujson

import (
	"fmt"
	"math"
	"strconv"

	"github.com/mirage-go/mirage/ugraph"
)

// Attrs is the JSON form of a ugraph.Attr: exactly the members the op's
// kind uses, by name. Embedded in an op's struct, its members follow "in".
type Attrs struct {
	Dim    *int     `json:"dim,omitempty"`
	Min    *float64 `json:"min,omitempty"`
	Max    *float64 `json:"max,omitempty"`
	Scalar *float64 `json:"scalar,omitempty"`
	Accum  string   `json:"accum,omitempty"`
}

// scalarNames names the entries of Attr.Scalars for each kind that uses
// them; len(scalarNames[k]) == k.Info().Scalars (a test checks).
var scalarNames = map[ugraph.OpKind][]string{
	ugraph.OpClamp:     {"min", "max"},
	ugraph.OpMulScalar: {"scalar"},
}

func (j *Attrs) setScalar(name string, x float64) {
	switch name {
	case "min":
		j.Min = &x
	case "max":
		j.Max = &x
	case "scalar":
		j.Scalar = &x
	}
}

// usesDim and usesAccum mirror ugraph.Canonical: the kinds whose Attr.Dim
// and Attr.Accum carry meaning.
func usesDim(k ugraph.OpKind) bool {
	switch k.Info().Class {
	case ugraph.ClassReduction, ugraph.ClassNorm, ugraph.ClassConcat:
		return true
	}
	return false
}

func usesAccum(k ugraph.OpKind) bool { return k.Info().Class == ugraph.ClassAccum }

// EncodeAttr returns the members of a that kind k uses. JSON has no NaN or
// infinity, so such scalars are an error.
func EncodeAttr(k ugraph.OpKind, a ugraph.Attr) (Attrs, error) {
	var j Attrs
	if usesDim(k) {
		d := a.Dim
		j.Dim = &d
	}
	if usesAccum(k) {
		j.Accum = a.Accum.String()
	}
	names := scalarNames[k]
	if len(names) != k.Info().Scalars {
		return Attrs{}, fmt.Errorf("%v: no JSON names for its %d scalars", k, k.Info().Scalars)
	}
	for i, name := range names {
		x := a.Scalars[i]
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return Attrs{}, fmt.Errorf("%s is %v, which JSON cannot represent", name, x)
		}
		j.setScalar(name, x)
	}
	return j, nil
}

// DecodeAttr reads from o the members kind k uses; all of them are required.
// Members of other kinds stay unread, so o.Unread reports them.
func DecodeAttr(k ugraph.OpKind, o *Object) (ugraph.Attr, error) {
	var a ugraph.Attr
	var err error
	if usesDim(k) {
		if a.Dim, err = o.Int("dim"); err != nil {
			return a, err
		}
	}
	if usesAccum(k) {
		name, err := o.String("accum")
		if err != nil {
			return a, err
		}
		if a.Accum, err = ugraph.ParseAccum(name); err != nil {
			return a, fmt.Errorf("field \"accum\": %w", err)
		}
	}
	names := scalarNames[k]
	if len(names) != k.Info().Scalars {
		return a, fmt.Errorf("%v: no JSON names for its %d scalars", k, k.Info().Scalars)
	}
	for i, name := range names {
		if a.Scalars[i], err = o.Float(name); err != nil {
			return a, err
		}
	}
	return a, nil
}

// AttrText returns the members of a that kind k uses as "name=value"
// strings, in the order the JSON form lists them: the attributes of an op
// as printed for a human.
func AttrText(k ugraph.OpKind, a ugraph.Attr) []string {
	var s []string
	if usesDim(k) {
		s = append(s, fmt.Sprintf("dim=%d", a.Dim))
	}
	for i, name := range scalarNames[k] {
		s = append(s, name+"="+strconv.FormatFloat(a.Scalars[i], 'g', -1, 64))
	}
	if usesAccum(k) {
		s = append(s, "accum="+a.Accum.String())
	}
	return s
}
