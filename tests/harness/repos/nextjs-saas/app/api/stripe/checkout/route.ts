import { eq } from 'drizzle-orm';
import { NextRequest, NextResponse } from 'next/server';
import Stripe from 'stripe';
import { db } from '@/lib/db/drizzle';
import { teamMembers, teams, users } from '@/lib/db/schema';
import { setSession } from '@/lib/auth/session';
import { stripe } from '@/lib/payments/stripe';

export async function GET(request: NextRequest) {
  const sessionId = request.nextUrl.searchParams.get('session_id');
  if (!sessionId) {
    return NextResponse.redirect(new URL('/pricing', request.url));
  }

  try {
    const session = await stripe.checkout.sessions.retrieve(sessionId, {
      expand: ['customer', 'subscription']
    });
    const customerId = (session.customer as Stripe.Customer).id;
    const subscription = session.subscription as Stripe.Subscription;
    const plan = subscription.items.data[0]?.price;
    const userId = Number(session.client_reference_id);

    const [user] = await db.select().from(users).where(eq(users.id, userId)).limit(1);
    const [membership] = await db
      .select({ teamId: teamMembers.teamId })
      .from(teamMembers)
      .where(eq(teamMembers.userId, user.id))
      .limit(1);

    await db
      .update(teams)
      .set({
        stripeCustomerId: customerId,
        stripeSubscriptionId: subscription.id,
        stripeProductId: plan?.product as string,
        subscriptionStatus: subscription.status,
        updatedAt: new Date()
      })
      .where(eq(teams.id, membership.teamId));

    await setSession(user);
    return NextResponse.redirect(new URL('/dashboard', request.url));
  } catch (error) {
    console.error('Error handling successful checkout:', error);
    return NextResponse.redirect(new URL('/error', request.url));
  }
}
