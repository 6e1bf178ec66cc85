// Package jsonfloat is a float64 that JSON can carry whatever its value:
// JSON has no NaN or infinity, which a program that divides by zero
// computes, so those are written as the strings Go's text form prints
// ("NaN", "+Inf", "-Inf"), and read back.
package jsonfloat

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// Float is a float64 with that JSON form.
type Float float64

func (f Float) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return json.Marshal(strconv.FormatFloat(v, 'g', -1, 64))
	}
	return json.Marshal(v)
}

func (f *Float) UnmarshalJSON(b []byte) error {
	var v float64
	if err := json.Unmarshal(b, &v); err == nil {
		*f = Float(v)
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a value is %s, not a number", b)
	}
	switch s {
	case "NaN", "+Inf", "-Inf":
		v, _ = strconv.ParseFloat(s, 64)
		*f = Float(v)
		return nil
	}
	return fmt.Errorf("a value is %q, not a number, NaN, +Inf or -Inf", s)
}
