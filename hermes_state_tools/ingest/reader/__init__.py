"""The reader process: started early (launch.py), it reads, plans and stages batches (process.py) and
sends them to the importing process (remote.py) over a pipe (channel.py)."""
