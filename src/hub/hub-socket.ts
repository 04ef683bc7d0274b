// The transport as a hub connection sees it, apart from the connection so that the transport's adapter
// (uws-socket.ts) depends on this small surface and not on the connection's class.
/** What the transport did with a frame given to HubSocket.send. */
export const FrameTaken = {
  /** Dropped: the socket is closed. */
  Refused: 0,
  /**
   * Taken, the first since the transport last wrote (or written at once with those before it): what the
   * transport holds may have grown since it was last asked.
   */
  First: 1,
  /**
   * Taken behind frames still waiting for this turn's write: the transport has written nothing since
   * the first of them, so what it holds can only have shrunk (the client read) since then.
   */
  Joined: 2,
} as const;
export type FrameTaken = (typeof FrameTaken)[keyof typeof FrameTaken];

/** What the connection needs from the transport; uws-socket.ts adapts a uWS WebSocket to it. */
export interface HubSocket {
  /**
   * Sends one frame, or queues it to go out with the others of this event-loop turn. A drop by the
   * transport (its back-pressure limit) found when the frames go out is told to transportDropped().
   */
  send(data: string | Uint8Array, binary: boolean): FrameTaken;
  /** Bytes the transport holds because the client has not read them yet. */
  bufferedAmount(): number;
  /** Closes the WebSocket with a normal closure. */
  end(): void;
  /** Drops the connection at once: no close handshake, nothing waiting sent. */
  drop(): void;
}
