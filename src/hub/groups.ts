// Group membership: the hub sends a group message to each member itself (encoded once per protocol),
// so that every frame a connection gets passes its own send path; this registry also answers isInGroup.

export class GroupRegistry<Member> {
  private readonly byGroup = new Map<string, Set<Member>>();
  private readonly byMember = new Map<Member, Set<string>>();

  /** True when the member was not yet in the group. */
  add(group: string, member: Member): boolean {
    let members = this.byGroup.get(group);
    if (!members) this.byGroup.set(group, (members = new Set()));
    if (members.has(member)) return false;
    members.add(member);
    let groups = this.byMember.get(member);
    if (!groups) this.byMember.set(member, (groups = new Set()));
    groups.add(group);
    return true;
  }

  /** True when the member was in the group. */
  remove(group: string, member: Member): boolean {
    const members = this.byGroup.get(group);
    if (!members?.delete(member)) return false;
    if (members.size === 0) this.byGroup.delete(group);
    const groups = this.byMember.get(member);
    groups?.delete(group);
    if (groups?.size === 0) this.byMember.delete(member);
    return true;
  }

  /** Removes the member from every group; returns the groups it was in. */
  removeMember(member: Member): string[] {
    const groups = [...(this.byMember.get(member) ?? [])];
    for (const group of groups) this.remove(group, member);
    return groups;
  }

  /** The groups the member is in (a snapshot). */
  groupsOf(member: Member): string[] {
    return [...(this.byMember.get(member) ?? [])];
  }

  has(group: string, member: Member): boolean {
    return this.byGroup.get(group)?.has(member) ?? false;
  }

  /** The live set (undefined: no members): iterate it without changing membership other than leaving. */
  membersOf(group: string): ReadonlySet<Member> | undefined {
    return this.byGroup.get(group);
  }

  /** A snapshot, safe to iterate while members leave. */
  members(group: string): Member[] {
    return [...(this.byGroup.get(group) ?? [])];
  }

  groupCount(): number {
    return this.byGroup.size;
  }
}
