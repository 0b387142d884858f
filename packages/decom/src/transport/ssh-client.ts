/** --ssh: which SSH client reaches the hosts (transport/connector.ts decides per host). */
export const SSH_CLIENTS = ['ssh2', 'openssh'] as const;
export type SshClient = (typeof SSH_CLIENTS)[number];
