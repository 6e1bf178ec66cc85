// Package layers holds no code: its test checks that the module's packages
// import one another only downward, along the floors of DESIGN.md §2.
package layers
