package check

// MatchOutputs is matchOutputs, for check_test.
var MatchOutputs = matchOutputs
