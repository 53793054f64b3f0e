// placeholder while being written
