// Package benchcheck runs the tests of the bench scripts that check gpuwatt against
// references it did not make (bench/gpu/crosscheck.py and its unittest), where python3 is
// present: on the sim device, with a stand-in for the independent poller, so that the
// script a GPU run depends on is tested before it meets a GPU. It has no code of its own.
package benchcheck
