//go:build !linux

package marks

import "errors"

// watchWrites is Linux's inotify only; elsewhere the tail polls every ArrivalPoll.
func watchWrites(string) (<-chan struct{}, func(), error) {
	return nil, nil, errors.New("no inotify")
}
