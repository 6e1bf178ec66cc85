// Package deploy holds no code: its directory holds the files that run a
// sharded mirage superopt on a cluster's scheduler (slurm/, k8s/; README,
// "Past one machine"), and its tests check them, through a real Slurm
// cluster where the machine allows one.
package deploy
