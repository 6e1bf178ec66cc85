package check

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/mirage-go/mirage/internal/jsonfloat"
	"github.com/mirage-go/mirage/internal/memlimit"
	"github.com/mirage-go/mirage/interp"
	"github.com/mirage-go/mirage/ugraph/kernel"
)

// Summary is what eval reports of one output tensor.
type Summary struct {
	Shape  []int `json:"shape"`
	Sum    Value `json:"sum"`
	L2     Value `json:"l2"`
	MaxAbs Value `json:"max_abs"`
}

// Value is a summary's value: NaN and infinities, which a program that
// divides by zero computes, are written in JSON as the strings the text
// form prints ("NaN", "+Inf", "-Inf"), and read back.
type Value = jsonfloat.Float

// String is the summary as mirage eval prints it, the shape as
// ugraph.Shape writes one: [16, 4096].
func (s Summary) String() string {
	dims := make([]string, len(s.Shape))
	for i, d := range s.Shape {
		dims[i] = strconv.Itoa(d)
	}
	return fmt.Sprintf("[%s]  sum %.9g  l2 %.9g  max|x| %.9g", strings.Join(dims, ", "), s.Sum, s.L2, s.MaxAbs)
}

// Eval runs g in float64 on random inputs drawn with seed (each as it is
// first read: interp.RunDrawn), within limit bytes (refused before
// anything is allocated; 0: memlimit.Default), and summarizes each output.
func Eval(g *kernel.Graph, seed, limit int64) ([]Summary, error) {
	if limit <= 0 {
		limit = memlimit.Default
	}
	if err := interp.CheckDrawnMemory(g, limit); err != nil {
		return nil, err
	}
	outs, err := interp.RunDrawn(g, interp.NewDraws(g, seed, -1, 1), limit)
	if err != nil {
		return nil, err
	}
	sums := make([]Summary, len(outs))
	for i, t := range outs {
		s := Summary{Shape: t.Shape.Dims()}
		var sum, l2, maxAbs float64
		for _, v := range t.Data {
			sum += v
			l2 += v * v
			maxAbs = math.Max(maxAbs, math.Abs(v))
		}
		s.Sum, s.L2, s.MaxAbs = Value(sum), Value(math.Sqrt(l2)), Value(maxAbs)
		sums[i] = s
	}
	return sums, nil
}
