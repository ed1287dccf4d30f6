"""The ground floor every layer stands on: errors, atomic writes, cache paths, manifests, child processes, the hub
switch, the judge's labels and secret redaction. It imports nothing else of hyporag."""
