// The longest device id registration accepts. Ids become topic levels and Home Assistant object ids
// (src/mqtt), so the MQTT side knows from this how long a name of its own can be.

/** Characters (code points) of a device id, at most. */
export const DEVICE_ID_MAX_LENGTH = 128;
