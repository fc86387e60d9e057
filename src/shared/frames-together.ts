import type WebSocket from 'ws';

/** The socket under a `ws` WebSocket (a field `ws` has always had, not part of its typed API). */
interface Corkable {
  cork(): void;
  uncork(): void;
}

const held = new Set<Corkable>();

function release(socket: Corkable): void {
  held.delete(socket);
  socket.uncork();
}

/**
 * Sends a frame on a tunnel, holding the socket's writes until this turn of the event loop has run
 * (`setImmediate`): the frames sent meanwhile (a claim's `runs/execute` and its reply, the replies of
 * reports applied together, acks) leave in one system call. Each write to a peer that sleeps wakes
 * it, which costs both processes more than the write itself; under load most turns send several
 * frames to the same peer.
 */
export function sendFrameTogether(ws: WebSocket, data: string): void {
  const socket = (ws as unknown as { _socket?: Corkable | null })._socket;
  if (socket && !held.has(socket)) {
    held.add(socket);
    socket.cork();
    process.nextTick(release, socket);
  }
  ws.send(data);
}
