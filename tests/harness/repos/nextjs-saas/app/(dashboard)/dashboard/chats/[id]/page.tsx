import { notFound } from 'next/navigation';
import { getChatById } from '@/lib/db/queries';
import { Chat } from '@/components/chat';

export default async function ChatPage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  const chat = await getChatById(Number(id));
  if (!chat) {
    notFound();
  }

  return (
    <section className="flex-1 p-4 lg:p-8">
      <h1 className="text-lg font-medium mb-4">{chat.title ?? 'Untitled chat'}</h1>
      <Chat id={String(chat.id)} initialMessages={chat.messages} />
    </section>
  );
}
