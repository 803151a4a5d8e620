import Link from 'next/link';
import { redirect } from 'next/navigation';
import { getChatsForTeam, getTeamForUser } from '@/lib/db/queries';
import { customerPortalAction } from '@/lib/payments/actions';
import { Chat } from '@/components/chat';

export default async function DashboardPage() {
  const team = await getTeamForUser();
  if (!team) {
    redirect('/sign-in');
  }
  const chats = await getChatsForTeam(team.id);

  return (
    <section className="flex-1 p-4 lg:p-8 grid gap-6 lg:grid-cols-[240px_1fr]">
      <aside>
        <h2 className="text-sm font-semibold text-gray-500 mb-2">Recent chats</h2>
        <ul className="space-y-1">
          {chats.map((c) => (
            <li key={c.id}>
              <Link href={`/dashboard/chats/${c.id}`} className="text-sm hover:underline">
                {c.title ?? 'Untitled'}
              </Link>
            </li>
          ))}
        </ul>
        <form action={customerPortalAction} className="mt-6">
          <button className="text-sm text-orange-600">Manage subscription ({team.planName || 'Free'})</button>
        </form>
      </aside>
      <Chat />
    </section>
  );
}
