# trimmed: the trl lines of the script

