# tests/integration/notify_agent.py — a minimal seccomp notify agent for notify.sh:
# takes the listener fd from the runtime and answers one notification with EACCES.
import socket, os, struct, fcntl, sys, array
path=sys.argv[1]
s=socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); 
try: os.unlink(path)
except: pass
s.bind(path + ".tmp"); s.listen(1)
os.rename(path + ".tmp", path)  # listening before the path appears
c,_=s.accept()
fds=array.array('i')
msg, anc, flags, addr = c.recvmsg(8192, socket.CMSG_LEN(4))
for level, typ, data in anc:
    fds.frombytes(data[:4])
print("agent got", len(fds), "fd(s); msg:", msg.decode(), flush=True)
fd=fds[0]
buf=bytearray(80)
fcntl.ioctl(fd, 0xc0502100, buf)
nid,pid,fl,nr=struct.unpack_from("QIIi",buf)
print("agent: notification for syscall", nr, "from pid", pid, flush=True)
resp=struct.pack("QqiI", nid, 0, -13, 0)
fcntl.ioctl(fd, 0xc0182101, bytearray(resp))
