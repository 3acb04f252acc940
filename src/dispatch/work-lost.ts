/**
 * Stopped, but some outcomes could not be written (the database down throughout the shutdown):
 * those deliveries wait out their leases and are sent again. The process should not exit 0.
 */
export class WorkLostAtShutdown extends Error {
  constructor(readonly lost: number) {
    super(`${lost} delivery outcomes could not be written at shutdown; those deliveries will be sent again`);
    this.name = 'WorkLostAtShutdown';
  }
}
