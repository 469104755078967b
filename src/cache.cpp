// Compiled mode of the cache layer: its implementation headers, built once.
