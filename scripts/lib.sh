# Shell functions the benchmark scripts share: `source "$(dirname "$0")/lib.sh"`.

# A TCP port on the loopback interface that nothing listens on now.
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Waits up to 10 s for something to listen on loopback port $1.
wait_for_port() {
    for _ in $(seq 100); do
        (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0
        sleep 0.1
    done
    echo "nothing listens on 127.0.0.1:$1 after 10 s" >&2
    return 1
}
