//go:build unix

package dirs

// join joins a directory and names with slashes, as filepath.Join does for the clean,
// absolute directories and plain names it is given here.
func join(dir string, names ...string) string {
	for len(dir) > 1 && dir[len(dir)-1] == '/' {
		dir = dir[:len(dir)-1]
	}
	for _, n := range names {
		if dir != "/" {
			dir += "/"
		}
		dir += n
	}
	return dir
}

func isAbs(path string) bool { return path != "" && path[0] == '/' }
