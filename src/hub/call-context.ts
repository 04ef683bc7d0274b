// What a hub method sees of the connection that called it (HubCallContext in types.ts), made once per
// connection: the hub methods (src/api) get this narrow view and never the connection itself.
import type { HubConnection } from './connection.js';
import type { GroupRegistry } from './groups.js';
import { invocation, type ProtocolName } from './messages.js';
import type { HubCallContext } from './types.js';

export function callContext(connection: HubConnection, groups: GroupRegistry<HubConnection>): HubCallContext {
  return {
    connectionId: connection.connectionId,
    user: connection.user,
    get protocol(): ProtocolName {
      return connection.protocol?.name ?? 'json';
    },
    joinGroup: (name) => connection.joinGroup(name),
    leaveGroup: (name) => groups.remove(name, connection),
    isInGroup: (name) => groups.has(name, connection),
    groups: () => groups.groupsOf(connection),
    sendToCaller: (target, ...args) => connection.send(invocation(target, args)),
  };
}
