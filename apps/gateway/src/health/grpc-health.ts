import * as grpc from '@grpc/grpc-js';

const clients = new Map<string, grpc.Client>();
const serialize = (req: { service: string }) => {
  // grpc.health.v1.HealthCheckRequest { string service = 1; }: field 1, wire type 2.
  const s = Buffer.from(req.service, 'utf8');
  return Buffer.concat([Buffer.from([0x0a, s.length]), s]);
};
// HealthCheckResponse { ServingStatus status = 1; } → bytes [0x08, status]; SERVING = 1.
const deserialize = (buf: Buffer) => ({ status: buf.length >= 2 && buf[0] === 0x08 ? buf[1] : 0 });

/**
 * Calls the standard gRPC health service (`grpc.health.v1.Health/Check`, overall status) of a
 * backing service. Resolves true when it answers SERVING within `timeoutMs`.
 */
export function checkGrpcHealth(address: string, timeoutMs: number): Promise<boolean> {
  let client = clients.get(address);
  if (!client) {
    client = new grpc.Client(address, grpc.credentials.createInsecure());
    clients.set(address, client);
  }
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      '/grpc.health.v1.Health/Check',
      serialize,
      deserialize,
      { service: '' },
      new grpc.Metadata(),
      { deadline: Date.now() + timeoutMs },
      (err, res) => resolve(!err && res?.status === 1),
    );
  });
}
