// Device endpoints: register, status update, list, delete and token refresh.
import type { DeviceRegistry, RegisterRequest, StatusRequest } from '../../devices/registry.js';
import type { Route } from '../../http/router.js';
import { PROBLEM, ref } from '../openapi/components.js';

export function deviceRoutes(registry: DeviceRegistry): Route[] {
  return [
    {
      method: 'POST',
      path: '/api/device/register',
      operationId: 'registerDevice',
      summary: 'Register a device and receive its device token',
      tag: 'Devices',
      auth: { apiKey: true },
      body: 'RegisterDeviceRequest',
      responses: {
        200: { description: 'Registered', schema: ref('TokenGrant') },
        400: PROBLEM.validation,
        403: { description: 'Registration is disabled', ...PROBLEM.any },
        409: { description: 'deviceId already registered (or its deletion not yet answered), or MaxDevices reached', ...PROBLEM.any },
        503: PROBLEM.storage,
      },
      handler: async ({ body }) => ({ status: 200, body: await registry.register(body as RegisterRequest) }),
    },
    {
      method: 'PUT',
      path: '/api/device/{deviceId}/status',
      operationId: 'updateDeviceStatus',
      summary: 'Report status and metrics; sets lastSeen',
      tag: 'Devices',
      auth: { bearer: 'any', device: 'deviceId' },
      body: 'DeviceStatusRequest',
      responses: {
        200: { description: 'The updated device', schema: ref('Device') },
        400: PROBLEM.validation,
        404: { description: 'Unknown device', ...PROBLEM.any },
      },
      handler: ({ params, body }) => ({ status: 200, body: registry.updateStatus(params.deviceId!, body as StatusRequest) }),
    },
    {
      method: 'GET',
      path: '/api/device/list',
      operationId: 'listDevices',
      summary: 'List registered devices',
      tag: 'Devices',
      auth: { bearer: 'admin' },
      responses: {
        200: { description: 'All devices', schema: ref('DeviceList') },
      },
      handler: () => ({ status: 200, body: registry.list() }),
    },
    {
      method: 'DELETE',
      path: '/api/device/{deviceId}',
      operationId: 'deleteDevice',
      summary: 'Delete a device: frees a MaxDevices slot, revokes its tokens, ends its sessions and deletes their records',
      tag: 'Devices',
      auth: { bearer: 'admin' },
      responses: {
        200: { description: 'The deleted device', schema: ref('Device') },
        404: { description: 'Unknown device', ...PROBLEM.any },
        503: PROBLEM.storage,
      },
      handler: async ({ params }) => ({ status: 200, body: await registry.delete(params.deviceId!) }),
    },
    {
      method: 'POST',
      path: '/api/device/{deviceId}/token',
      operationId: 'refreshDeviceToken',
      summary: 'Exchange a still-valid device token (or an admin token) for a fresh one',
      tag: 'Devices',
      auth: { bearer: 'any', device: 'deviceId' },
      responses: {
        200: { description: 'A fresh token', schema: ref('TokenGrant') },
        404: { description: 'Unknown device', ...PROBLEM.any },
      },
      handler: async ({ params }) => ({ status: 200, body: await registry.refreshToken(params.deviceId!) }),
    },
  ];
}
