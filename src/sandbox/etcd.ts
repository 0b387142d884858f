export async function startEtcd(..._a: unknown[]): Promise<void> {}
